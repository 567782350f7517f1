"""The OpenAI-compatible server backend (``openai:``): HTTP with retries, scoring from echoed log-probs,
chat and completion generation, the batch API, and the checks each reply passes where it enters."""
