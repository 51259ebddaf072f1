"""Every read the edges show: a session's state and lists, what needs a person, what
others did to an agent's plans, and excerpts of plan text. Reads never write."""
