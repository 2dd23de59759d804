import sys

from defsentflow.cli import main

sys.exit(main())
