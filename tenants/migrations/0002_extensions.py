"""Create the PostgreSQL extensions in ``public`` so every tenant schema can use them."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("tenants", "0001_initial")]

    operations = [
        migrations.RunSQL(
            "CREATE EXTENSION IF NOT EXISTS vector SCHEMA public;"
            "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
