"""``python -m agents.hosting CMD_FD EVENT_FD``: a worker process serving live runs
(:func:`agents.hosting.worker.main`)."""

import sys

from agents.hosting.worker import main

if __name__ == "__main__":
    main(sys.argv[1:])
