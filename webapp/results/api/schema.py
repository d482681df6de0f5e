"""What the OpenAPI document says besides each view's own answers: the errors any operation
may give (DRF raises them before a view runs, so no view declares them), that reads need no
token when anonymous reads are on, that an empty query parameter is one not given, that a
parameter holds no NUL (PostgreSQL cannot store one: django-filter answers 400, a path 404),
and the bounds of nested lists. Every view has the default authentication and permission
classes (ReadAnonymousWriteWithPermission); a view that changed them would be documented
wrongly, which tests/webapp/test_write_auth.py and the schema fuzzing would say."""

from django.conf import settings
from drf_spectacular import openapi
from rest_framework import serializers

SAFE = {"get", "head", "options"}
NO_NUL = "^[^\\u0000]*$"
DETAIL = {"$ref": "#/components/schemas/ErrorDetail"}
FIELD_ERRORS = {"$ref": "#/components/schemas/FieldErrors"}
SCHEMAS = {
    "ErrorDetail": {
        "type": "object",
        "properties": {"detail": {"type": "string"}},
        "required": ["detail"],
    },
    "FieldErrors": {
        "type": "object",
        "description": "Field or parameter name (or non_field_errors) -> what is wrong with it.",
        "minProperties": 1,
    },
}


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's, with the bounds of `many=True` lists (minItems, maxItems), which it
    leaves out, wherever a list is (a nested field, a PolymorphicProxySerializer's list form)."""

    def _unwrap_list_serializer(self, serializer, direction):
        schema = super()._unwrap_list_serializer(serializer, direction)
        if schema is None or not isinstance(serializer, serializers.ListSerializer):
            return schema
        least = serializer.min_length or (0 if serializer.allow_empty else 1)
        if least:
            schema["minItems"] = least
        if serializer.max_length is not None:
            schema["maxItems"] = serializer.max_length
        return schema


def _error(description: str, schema: dict) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(method: str, operation: dict) -> dict[str, dict]:
    where = {parameter["in"] for parameter in operation.get("parameters", [])}
    errors = {"401": _error("A wrong token; or none, where one is needed.", DETAIL)}
    if "requestBody" in operation or "query" in where:
        errors["400"] = _error("A field or parameter is wrong: each is named.", FIELD_ERRORS)
    if method not in SAFE:
        errors["403"] = _error("The token's user may not do this.", DETAIL)
    if "path" in where:
        errors["404"] = _error("No such object.", DETAIL)
    return errors


def _without_nul(parameter: dict) -> None:
    """A free-text parameter (no pattern, enum or format of its own) has no NUL."""
    schema = parameter["schema"]
    if schema.get("type") == "string" and not {"pattern", "enum", "format"} & set(schema):
        schema["pattern"] = NO_NUL


def _resolve(result: dict, schema: dict) -> dict:
    ref = schema.get("$ref", "")
    return result["components"]["schemas"][ref.rpartition("/")[2]] if ref else schema


def _is_required(result: dict, schema: dict) -> bool:
    """An empty body is not a list, nor an object with required properties."""
    return schema.get("type") == "array" or bool(_resolve(result, schema).get("required"))


def _needs_a_body(result: dict, operation: dict) -> None:
    """A body that is one of several shapes, none of them empty, is itself required
    (drf-spectacular cannot tell for a PolymorphicProxySerializer)."""
    for media in operation.get("requestBody", {}).get("content", {}).values():
        shapes = _resolve(result, media["schema"]).get("oneOf", [])
        if shapes and all(_is_required(result, shape) for shape in shapes):
            operation["requestBody"]["required"] = True


def complete_the_document(result: dict, generator, request, public: bool) -> dict:
    """A drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"])."""
    result.setdefault("components", {}).setdefault("schemas", {}).update(SCHEMAS)
    for operations in result["paths"].values():
        for method, operation in operations.items():
            _needs_a_body(result, operation)
            for code, response in _errors(method, operation).items():
                operation["responses"].setdefault(code, response)
            for parameter in operation.get("parameters", []):
                _without_nul(parameter)
                # As django-filter and DRF read them: ?since= is no filter at all.
                if parameter["in"] == "query" and not parameter.get("required"):
                    parameter["allowEmptyValue"] = True
            security = operation.setdefault("security", [])
            if method in SAFE and settings.TPCBENCH_ANONYMOUS_READS and {} not in security:
                security.append({})  # no token needed
    return result
