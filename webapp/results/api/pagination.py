"""limit and offset as the schema states them: DRF's LimitOffsetPagination answers a page of
the default size for ?limit=many or ?offset=-1; here they are a 400 naming the parameter."""

import re

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000
MAX_OFFSET = 2**62  # inside PostgreSQL's bigint, which OFFSET takes
DIGITS = re.compile(r"[0-9]{1,20}")


class CheckedLimitOffsetPagination(LimitOffsetPagination):
    """limit 1..MAX_LIMIT (default PAGE_SIZE), offset 0..MAX_OFFSET; empty means not given."""

    max_limit = MAX_LIMIT

    def _bounds(self) -> dict[str, tuple[int, int]]:
        return {self.limit_query_param: (1, MAX_LIMIT), self.offset_query_param: (0, MAX_OFFSET)}

    def _read(self, request, name: str, default: int) -> int:
        raw = request.query_params.get(name, "")
        if raw == "":
            return default
        low, high = self._bounds()[name]
        if not DIGITS.fullmatch(raw) or not low <= int(raw) <= high:
            raise ValidationError({name: [f"A whole number from {low} to {high}."]})
        return int(raw)

    def get_limit(self, request) -> int:
        return self._read(request, self.limit_query_param, self.default_limit)

    def get_offset(self, request) -> int:
        return self._read(request, self.offset_query_param, 0)

    def get_schema_operation_parameters(self, view) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            low, high = self._bounds()[parameter["name"]]
            parameter["schema"].update(minimum=low, maximum=high)
        return parameters
