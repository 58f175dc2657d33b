"""Fork from here: the accordion, the run on screen it forks, and the fork's stream view."""
