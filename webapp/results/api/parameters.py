"""Query parameters read as the schema states them."""

from rest_framework.request import Request


def validated_query(serializer_class, request: Request) -> dict:
    """The query parameters `serializer_class` takes, validated (a 400 naming the wrong one).
    An empty parameter is one not given, as the list endpoints' filters read it."""
    query = serializer_class(data={k: v for k, v in request.query_params.items() if v != ""})
    query.is_valid(raise_exception=True)
    return query.validated_data
