"""What SQS and SNS put around a message: message attributes, the receive count, SNS's envelope in
an SQS body. Read by the SQS, SNS and S3 sources (an S3 notification arrives in either)."""

from __future__ import annotations

from typing import Any

from .base import base64_bytes


def attribute_text(attribute: object) -> Any:
    """A message attribute's value as Lambda delivers it: SQS's ``stringValue`` / ``binaryValue``
    (base64), SNS's ``Value`` (base64 when its ``Type`` is ``Binary``); the ``read`` of SQS and
    SNS carriers."""
    if type(attribute) is not dict:
        return None
    if "Value" in attribute:
        binary = attribute.get("Type") == "Binary"
        value = attribute["Value"]
    else:
        binary = attribute.get("stringValue") is None
        value = attribute.get("binaryValue" if binary else "stringValue")
    return base64_bytes(value, "binary attribute")[0] if binary and isinstance(value, str) else value


def receive_attempt(count: object) -> int:
    """The attempt an ``ApproximateReceiveCount`` tells (its first receive is attempt 0); 0 when
    it is no count."""
    if type(count) is not str or not count.isdecimal() or len(count) > 18:
        return 0
    attempt = int(count) - 1
    return attempt if attempt > 0 else 0


def is_sns_envelope(doc: object) -> bool:
    """An SNS notification as SNS writes it into an SQS message body (not raw delivery)."""
    return type(doc) is dict and doc.get("Type") == "Notification" and "TopicArn" in doc and "Message" in doc
