#!/usr/bin/env python3
"""Decodes OTLP/HTTP protobuf trace requests (the bodies `gavel push --otlp`
sends) with the OpenTelemetry project's own Python bindings, and prints one
JSON object per span: its trace, span and parent span ids (hex), name, kind, times,
attributes, events and status, with the resource attributes it came under.

Usage: otlp_decode.py BODY_FILE...   (needs `pip install opentelemetry-proto`)
"""
import json
import sys

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(items):
    return {a.key: value(a.value) for a in items}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    for path in sys.argv[1:]:
        request = trace_service_pb2.ExportTraceServiceRequest()
        with open(path, "rb") as f:
            request.ParseFromString(f.read())
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    print(json.dumps({
                        "resource": resource,
                        "scope": scope_spans.scope.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "attributes": attributes(span.attributes),
                        "events": [{"name": e.name, "time": e.time_unix_nano,
                                    "attributes": attributes(e.attributes)} for e in span.events],
                        "status": {"code": span.status.code, "message": span.status.message},
                    }, sort_keys=True))


if __name__ == "__main__":
    main()
