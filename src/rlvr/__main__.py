"""``python -m rlvr``: the command line (what ``torchrun -m rlvr train ...`` and ``accelerate launch -m rlvr`` run)."""

from rlvr.cli.app import main

if __name__ == "__main__":
    main()
