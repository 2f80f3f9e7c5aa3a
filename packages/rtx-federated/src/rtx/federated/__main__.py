import sys

from rtx.federated.cli import main

sys.exit(main())
