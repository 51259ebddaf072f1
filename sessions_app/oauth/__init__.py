"""9plan as an OAuth 2.1 authorization server (django-oauth-toolkit): the consent page,
client ID metadata documents, and tokens as callers."""
