"""The Benchmark tab: its layout and handlers, its charts, and opening one item in Compare."""
