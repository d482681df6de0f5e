# The dashboard that `make demo` and `make reproduce` serve: the Django webapp under gunicorn
# on 127.0.0.1, its state in one folder (secret key, SQLite database unless one is given,
# static files, API token, pid, logs). Sourced; the caller sets PY (the virtualenv's python).

# webapp_env DIR [DATABASE_URL]: the webapp's environment, with a secret key made once in DIR.
webapp_env() {
  local dir=$1
  mkdir -p "$dir"
  [ -s "$dir/secret-key" ] || (umask 077; "$PY" -c 'import secrets; print(secrets.token_urlsafe(50))' > "$dir/secret-key")
  export DATABASE_URL=${2:-sqlite:///$dir/db.sqlite3}
  export DJANGO_SECRET_KEY
  DJANGO_SECRET_KEY=$(cat "$dir/secret-key")
  export DJANGO_STATIC_ROOT=$dir/static
}

# webapp_prepare DIR NAME: the database's tables, the static files, and an API token for the
# orchestrator NAME in DIR/api-token (made once; remove the file for a new one).
webapp_prepare() {
  "$PY" webapp/manage.py migrate --noinput -v 0
  "$PY" webapp/manage.py collectstatic --noinput -v 0
  if [ ! -s "$1/api-token" ]; then
    (umask 077; "$PY" webapp/manage.py create_api_token "$2" | tail -n 1 | awk '{print $NF}' > "$1/api-token")
  fi
}

# webapp_serve DIR PORT: gunicorn in the background; waits up to 30 s for the API to answer.
webapp_serve() {
  local url=http://127.0.0.1:$2
  setsid .venv/bin/gunicorn --chdir webapp --bind "127.0.0.1:$2" --workers 2 \
    --access-logfile "$1/access.log" --error-logfile "$1/webapp.log" \
    --pid "$1/webapp.pid" --daemon webapp.tpcbench_web.wsgi:application
  for _ in $(seq 1 60); do curl -fsS -o /dev/null "$url/api/v1/nodes/" 2>/dev/null && return 0; sleep 0.5; done
  curl -fsS -o /dev/null "$url/api/v1/nodes/"
}

# webapp_stop DIR: stop what webapp_serve started; true when there was one to stop.
webapp_stop() {
  local stopped=1
  if [ -s "$1/webapp.pid" ] && kill -0 "$(cat "$1/webapp.pid")" 2>/dev/null; then
    kill "$(cat "$1/webapp.pid")" && stopped=0
  fi
  rm -f "$1/webapp.pid"
  return $stopped
}
