"""``python -m proctor.cli`` runs the ``proctor`` command."""

from proctor.cli import main

main()
