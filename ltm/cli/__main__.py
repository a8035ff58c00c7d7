"""``python -m ltm.cli``: the same as the ``ltm`` console script."""

from ltm.cli import main

raise SystemExit(main())
