"""A webhook subscription keeps its previous secret for a while after a rotation: both sign
every message until the overlap ends, so a receiver changes over without losing one."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0014_drop_covered_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhooksubscription",
            name="previous_secret",
            field=models.CharField(blank=True, default="", max_length=80),
        ),
        migrations.AddField(
            model_name="webhooksubscription",
            name="previous_secret_until",
            field=models.DateTimeField(blank=True, null=True, verbose_name="previous secret signs until"),
        ),
    ]
