"""The Compare tab: its handlers, one live run, and Step through."""
