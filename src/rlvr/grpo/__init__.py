"""GRPO: rollouts, group advantages, clipped policy loss, and the training loop."""
