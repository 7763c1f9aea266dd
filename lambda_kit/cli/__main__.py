"""``python -m lambda_kit.cli``: the ``lambda-kit`` command."""

from . import main

raise SystemExit(main())
