"""Spider middlewares: evaluators that see responses and their output."""
