"""Django project of the tpc-bench web app: settings, root URLs, WSGI entry point."""
