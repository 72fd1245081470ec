"""Human annotation of a ranked corpus (SPEC §7): web app, database, agreement statistics."""
