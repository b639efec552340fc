"""rlvr's own engine: sampling with a KV cache, multi-turn episodes, the GRPO loop, held-out evaluation."""
