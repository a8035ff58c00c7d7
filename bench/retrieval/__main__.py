"""``python -m bench.retrieval``: see :mod:`bench.retrieval.run`."""

from bench.retrieval.run import main

raise SystemExit(main())
