"""The settings' reader of the environment: django-environ's `Env`, strict where its own
casts would let a mistyped value through.

Measured with django-environ 0.14.0, which, left as it is, reads:
- any word it does not know as false: DJANGO_DEBUG=ture would start in production mode
  and TPCBENCH_ANONYMOUS_READS=flase make every read private, both without a word;
- a number with every character but digits, '.', ',' and '-' dropped: "1e3" is 13.0,
  "0.3x" 0.3; "" and "abc" fail with "could not convert string to float: ''";
- a list with the spaces around its items kept: "a, b" is ["a", " b"];
- a value beginning with "$" as the name of another variable: a secret key may begin
  with "$", and the reader would replace it with "" (then refuse to start, key unset).
Here a boolean is true/1/yes/on or false/0/no/off, a number what float() reads, a list's
items are stripped and empty ones dropped, every value is taken as written, a variable set
but empty is one not set, and a value that cannot be read stops start-up naming it.
"""

from django.core.exceptions import ImproperlyConfigured
from environ import Env

BOOLEANS = {"1": True, "true": True, "yes": True, "on": True}
BOOLEANS |= {"0": False, "false": False, "no": False, "off": False}


class StrictEnv(Env):
    """`Env` with the reading above: `env.bool(NAME, default=...)`, `env.float`, `env.list`,
    `env.str`; without a default, an unset variable stops start-up."""

    def get_value(self, var, cast=None, default=Env.NOTSET, parse_default=False):
        value = self.ENVIRON.get(var, "")
        if value == "":
            if default is self.NOTSET:
                raise ImproperlyConfigured(f"Set the {var} environment variable")
            return default
        try:
            return self.parse_value(value, cast)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{var}={value!r}: {exc}") from exc

    @classmethod
    def parse_value(cls, value, cast):
        if cast is bool:
            if value.lower() not in BOOLEANS:
                raise ValueError("expected true or false")
            return BOOLEANS[value.lower()]
        if cast is float:
            try:
                return float(value)
            except ValueError:
                raise ValueError("expected a number") from None
        if cast is list:
            return [item.strip() for item in value.split(",") if item.strip()]
        return super().parse_value(value, cast)
