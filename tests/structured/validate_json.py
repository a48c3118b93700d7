#!/usr/bin/env python3
"""Independent check of constrained outputs (run by the C++ tests).

Reads JSON lines {"schema": <JSON Schema>, "text": <output string>} from the file
named on the command line and writes one JSON line per input to stdout:
{"valid": bool, "error": str}. `text` must parse as JSON and validate against the
schema with the jsonschema package (Debian's python3-jsonschema), formats
checked: date, time, date-time, uuid and email are also checked here directly,
so the result does not depend on jsonschema's optional format libraries.
"""
import datetime
import json
import re
import sys
import uuid

import jsonschema

EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                   r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$")
TIME = re.compile(r"^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$")


def check_date(value):
    datetime.date.fromisoformat(value)
    return re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) is not None


def check_time(value):
    return TIME.fullmatch(value) is not None


def check_date_time(value):
    date, _, time = value.partition("T")
    return check_date(date) and check_time(time)


def check_uuid(value):
    uuid.UUID(value)
    return re.fullmatch(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", value) is not None


def check_email(value):
    return EMAIL.fullmatch(value) is not None and ".." not in value


FORMATS = {"date": check_date, "time": check_time, "date-time": check_date_time, "uuid": check_uuid,
           "email": check_email}


def format_checker():
    checker = jsonschema.FormatChecker()
    for name, check in FORMATS.items():
        checker.checks(name, raises=(ValueError,))(check)
    return checker


def main():
    checker = format_checker()
    with open(sys.argv[1], encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            try:
                instance = json.loads(record["text"])
                cls = jsonschema.validators.validator_for(record["schema"], default=jsonschema.Draft202012Validator)
                validator = cls(record["schema"], format_checker=checker)
                errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
                result = {"valid": not errors, "error": errors[0].message if errors else ""}
            except Exception as error:  # not JSON at all
                result = {"valid": False, "error": f"{type(error).__name__}: {error}"}
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
