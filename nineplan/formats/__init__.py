"""How 9plan writes dates and times for people (the admin above all): one way everywhere,
year first, with the zone, so a time on a list reads the same as on a page and a reviewer
in another zone knows which one it is in. Times are shown in settings.TIME_ZONE."""
