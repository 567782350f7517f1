"""The Hugging Face transformers backend (``hf:``): loading, the forward layouts that score requests
(packed rows, tree attention, scoring units), the vocabulary head, decoding and vision models."""
