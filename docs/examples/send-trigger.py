# Caller side, Python 3.8+ (standard library only): sign and send one POST to an svc inbound trigger
# (docs/triggers.md). test/triggers/docs.test.ts runs this very file against a real server.
#   SVC_TRIGGER_URL=https://svc.example.com/hooks/<publicId> SVC_TRIGGER_SECRET=<secret> python3 send-trigger.py
import hashlib
import hmac
import json
import os
import time
import urllib.error
import urllib.request
import uuid

url = os.environ["SVC_TRIGGER_URL"]
secret = os.environ["SVC_TRIGGER_SECRET"]
body = json.dumps({"ref": "main"}).encode("utf-8")  # sign exactly the bytes you send
timestamp = str(int(time.time()))
delivery = str(uuid.uuid4())  # your id for this delivery: reuse it when you retry it
digest = hmac.new(secret.encode("utf-8"), f"{timestamp}.{delivery}.".encode("utf-8") + body, hashlib.sha256).hexdigest()
request = urllib.request.Request(url, data=body, method="POST", headers={
    "Content-Type": "application/json",
    "X-Svc-Timestamp": timestamp,
    "X-Svc-Delivery": delivery,
    "X-Svc-Signature": f"sha256={digest}",
})
try:
    with urllib.request.urlopen(request, timeout=30) as answer:
        print(answer.status, answer.read().decode("utf-8"))  # 202 {"deliveryId": "...", "status": "accepted"}
except urllib.error.HTTPError as refused:
    print(refused.code, refused.read().decode("utf-8"))
    raise SystemExit(1)
