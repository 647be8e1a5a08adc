"""The portal's Django database backend (``DATABASES[...]["ENGINE"]``): see :mod:`.base`."""
