"""Celery tasks, one module per queue. Every module here is imported when the app loads."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
