"""Models: a tiny causal LM built from a config (tests, demo), and loading local folders."""
