"""`python -m rtx.serving_api --registry DIR ...`: the same as `rtx serve`."""
import sys

from rtx.serving_api.cli import serve_command

if __name__ == "__main__":
    sys.exit(serve_command(sys.argv[1:]))
