"""Remote agents: the number of claims of a plan taken back (``Plan.reclaims``, which names
each new claim's plan file), and the answers kept for writes a caller may retry
(``WriteRequest``).

Adding a column may rebuild the plan table on SQLite, which drops the table's triggers: the
counting and search-index triggers are put back at the end (either way), as 0007 does.
"""

from importlib import import_module

import django.utils.timezone
from django.db import migrations, models

restore_triggers = import_module("sessions_app.migrations.0007_workers_leases").restore_triggers


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0011_drop_redundant_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="plan",
            name="reclaims",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.CreateModel(
            name="WriteRequest",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("caller", models.CharField(max_length=100)),
                ("request_id", models.CharField(max_length=64)),
                ("fingerprint", models.CharField(max_length=64)),
                ("answer", models.JSONField()),
                ("created_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("caller", "request_id"), name="write_request_unique")],
            },
        ),
        migrations.RunPython(restore_triggers, restore_triggers),
    ]
