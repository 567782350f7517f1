"""The evaluation engine: prepare every task, then run the model request by request kind."""
