"""``python -m proctor`` runs the ``proctor`` command, as ``python -m lm_eval`` runs lm-eval's."""

from proctor.cli import main

main()
