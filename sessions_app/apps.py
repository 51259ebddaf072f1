from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "9plan"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_migrate, pre_migrate, pre_save

        from sessions_app import search
        from sessions_app.maintenance import backup
        from sessions_app.oauth import checks  # noqa: F401 - registers the deploy check
        from sessions_app.store import attachment, event_feed, plan_counts

        # A later migration that rebuilds the plan table on SQLite drops its triggers
        # without a word; re-creating them after every migrate keeps search in sync.
        post_migrate.connect(search.ensure_index_after_migrate, sender=self)
        post_migrate.connect(plan_counts.ensure_triggers_after_migrate, sender=self)
        pre_migrate.connect(backup.backup_before_data_migration, sender=self)
        # Every writer of an event, present and future, tells the event feed that an id
        # may be uncommitted until its transaction ends (see event_feed.py).
        pre_save.connect(event_feed.before_event_saved, sender="sessions_app.Event")
        # Every process that opens the database says so for as long as it runs, so that a
        # restore does not replace the database under it (store/attachment.py).
        connection_created.connect(attachment.hold_while_running)
