"""Page pieces other than the tabs' handlers: header, Prompts and About tabs, example questions, theme and CSS."""
