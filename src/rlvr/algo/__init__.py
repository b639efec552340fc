"""The GRPO objective, pure and engine-neutral: group advantages, the clipped-ratio loss and its normalisers."""
