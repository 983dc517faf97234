#!/usr/bin/env python3
"""A reference provisioner for neocloud's hand-off: it receives `allocation.placed` and
`allocation.ended` at an operator webhook endpoint, verifies the Standard Webhooks
signature, and prints what it would do to hand the GPUs over with OpenStack Nova, Ironic
or Kubernetes. It runs nothing itself. With `--api` and `--operator-key` it reports back:
`markAllocationReady` with an SSH endpoint on the node (as if it had provisioned), so the
whole loop can be tried against the demo. It also takes `volume.created`, `volume.resized`
and `volume.deleted` (Cinder for block volumes, Swift for object storage) and reports a
created volume with `markVolumeReady`.

    python3 examples/provisioner/receiver.py --secret whsec_... --target kubernetes

Python 3.9+, standard library only. See docs/provisioning.md.
"""

import argparse
import base64
import hashlib
import hmac
import json
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_S = 300  # refuse deliveries signed more than five minutes away from now
MAX_BODY = 1 << 20


def verify(secret, headers, body):
    """The Standard Webhooks check: HMAC-SHA256 over `id.timestamp.body` with the
    base64 key of `whsec_<key>`, compared with each `v1,<base64>` of the header."""
    msg_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    if not msg_id or not stamp.isdigit() or abs(time.time() - int(stamp)) > TOLERANCE_S:
        return False
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{msg_id}.{stamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for candidate in headers.get("webhook-signature", "").split():
        version, _, sig = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(sig, expected):
            return True
    return False


def authorized_keys(data):
    return "\n".join(k["public_key"] + " " + k["name"] for k in data.get("ssh_keys", []))


def name_of(data):
    """A name for what is created: the random end of the allocation's id (its start is
    a timestamp, shared by allocations placed together)."""
    return "nc-" + data["allocation_id"].replace("-", "")[-12:]


def visible_devices(data):
    """What a container on the node sees: whole GPUs by UUID; a MIG slice is the MIG
    device the provisioner creates at the placed start slot (its UUID is read back
    with `nvidia-smi -L` on the node)."""
    if data.get("mig_profile"):
        return "<MIG device UUID of the instance created first>"
    return ",".join(g["uuid"] for g in data["gpus"])


def kubernetes(data):
    env = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": visible_devices(data)}]
    if data.get("milli_gpu"):
        share = max(1, data["milli_gpu"] // 10)
        env.append({"name": "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "value": str(share)})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name_of(data),
            "labels": {"neocloud.io/allocation": data["allocation_id"],
                       "neocloud.io/tenant": data["tenant_id"]},
        },
        "spec": {
            "nodeName": data["hostname"],
            "runtimeClassName": "nvidia",
            "restartPolicy": "Never",
            "containers": [{
                "name": "workload",
                "image": data["labels"].get("image", "nvcr.io/nvidia/pytorch:24.10-py3"),
                "env": env,
                "volumeMounts": [{"name": "ssh", "mountPath": "/root/.ssh", "readOnly": True}],
            }],
            "volumes": [{"name": "ssh", "secret": {"secretName": name_of(data) + "-ssh"}}],
        },
    }
    steps = []
    if data.get("mig_profile"):
        steps.append(mig_step(data))
    steps.append(f"kubectl create secret generic {name_of(data)}-ssh "
                 f"--from-literal=authorized_keys='{authorized_keys(data)}'")
    steps.append("kubectl apply -f - <<'POD'\n" + json.dumps(pod, indent=2) + "\nPOD")
    return steps


def mig_step(data):
    gpu = data["gpus"][0]
    return (f"ssh {data['hostname']} nvidia-smi mig -i {gpu['index']} "
            f"-cgi {data['mig_profile']}:{data['mig_start_slot']} -C")


def nova(data):
    name = name_of(data)
    count = len(data["gpus"])
    cloud_init = "#cloud-config\nssh_authorized_keys:\n" + "".join(
        f"  - {k['public_key']} {k['name']}\n" for k in data.get("ssh_keys", []))
    return [
        f"openstack flavor create {name} --vcpus 16 --ram 131072 --disk 200 --private "
        f"--property pci_passthrough:alias=gpu-{data['sku']}:{count}",
        f"cat > {name}.yaml <<'CLOUD'\n{cloud_init}CLOUD",
        f"openstack server create {name} --flavor {name} --image ubuntu-24.04 "
        f"--network tenant-{data['tenant_id']} --availability-zone nova:{data['hostname']} "
        f"--user-data {name}.yaml --property neocloud_allocation={data['allocation_id']} --wait",
    ]


def ironic(data):
    keys = {k["name"]: k["public_key"] for k in data.get("ssh_keys", [])}
    drive = json.dumps({"meta_data": {"public_keys": keys, "name": name_of(data)}})
    return [
        f"baremetal node set {data['hostname']} --instance-info image_source=http://images/ubuntu-24.04.qcow2 "
        f"--instance-info image_checksum=sha256:<checksum> --extra neocloud_allocation={data['allocation_id']}",
        f"baremetal node deploy {data['hostname']} --config-drive '{drive}' --wait",
    ]


def teardown(target, data, placed):
    """The steps that undo `placed` (the allocation's `allocation.placed` data, when this
    receiver saw it: `allocation.ended` does not repeat the MIG placement)."""
    name = name_of(data)
    mig = []
    if placed and placed.get("mig_profile"):
        gpu = placed["gpus"][0]["index"]
        mig = [f"ssh {data['hostname']} 'nvidia-smi mig -i {gpu} -dci -gi <instance created at placement>"
               f" && nvidia-smi mig -i {gpu} -dgi -gi <instance created at placement>'"]
    return {
        "kubernetes": [f"kubectl delete pod {name} --wait",
                       f"kubectl delete secret {name}-ssh"] + mig,
        "nova": [f"openstack server delete {name} --wait", f"openstack flavor delete {name}"],
        "ironic": [f"baremetal node undeploy {data['hostname']} --wait"],
    }[target]


PLANS = {"kubernetes": kubernetes, "nova": nova, "ironic": ironic}


def report(args, query, variables):
    """Runs an operator mutation on neocloud and prints its answer."""
    body = json.dumps({"query": query, "variables": variables}).encode()
    req = urllib.request.Request(args.api.rstrip("/") + "/graphql", data=body, headers={
        "content-type": "application/json", "authorization": "Bearer " + args.operator_key})
    with urllib.request.urlopen(req, timeout=10) as res:
        answer = json.load(res)
    print("reported:", json.dumps(answer), flush=True)


def report_ready(args, data):
    """Tells neocloud where the customer connects (here: SSH on the node itself)."""
    query = ("mutation($id: ID!, $e: [AccessEndpointInput!]!) "
             "{ markAllocationReady(id: $id, endpoints: $e) { id access { state } } }")
    endpoint = {"kind": "ssh", "host": data["hostname"], "port": 22, "username": "root"}
    report(args, query, {"id": data["allocation_id"], "e": [endpoint]})


def volume_steps(kind, data):
    """What the storage runs for a volume event: Cinder for block volumes, a Swift
    container with a quota for object storage (docs/volumes.md). A volume's GB is the
    storage's gigabyte: Cinder sizes in GiB, so the Swift quota is size × 2^30 bytes."""
    name, gb = f"nc-{data['volume_id']}", data["size_gb"]
    block = data["storage_class"] == "block"
    if kind == "volume.created":
        return ([f"openstack volume create --size {gb} --property tenant={data['tenant_id']} {name}"]
                if block else [f"openstack container create {name}",
                               f"swift post {name} -H 'X-Container-Meta-Quota-Bytes: {gb << 30}'"])
    if kind == "volume.resized":
        return ([f"openstack volume set --size {gb} {name}"] if block
                else [f"swift post {name} -H 'X-Container-Meta-Quota-Bytes: {gb << 30}'"])
    if data.get("reason") == "provisioning_failed":
        return []  # nothing was created
    return [f"openstack volume delete {name}"] if block else [f"swift delete {name}"]


def report_volume_ready(args, data):
    report(args, "mutation($id: ID!) { markVolumeReady(id: $id) { volume { id state } } }",
           {"id": data["volume_id"]})


def handle(args, event, seen, placed):
    if event["id"] in seen:  # at least once: the same event may come again
        return
    seen.add(event["id"])
    data, kind = event["data"], event["type"]
    if kind.startswith("volume."):
        print(f"# {kind} {data['volume_id']} ({data['storage_class']}, {data['size_gb']} GB)",
              flush=True)
        for step in volume_steps(kind, data):
            print(step, flush=True)
        if kind == "volume.created" and args.api and args.operator_key:
            threading.Thread(target=report_volume_ready, args=(args, data), daemon=True).start()
        return
    if kind == "allocation.placed":
        placed[data["allocation_id"]] = data
        steps = PLANS[args.target](data)
    elif kind == "allocation.ended":
        steps = teardown(args.target, data, placed.pop(data["allocation_id"], None))
    else:
        return
    print(f"# {kind} {data['allocation_id']} on {data['hostname']} ({args.target})", flush=True)
    for step in steps:
        print(step, flush=True)
    if kind == "allocation.placed" and args.api and args.operator_key:
        threading.Thread(target=report_ready, args=(args, data), daemon=True).start()


def serve(args):
    seen, placed = set(), {}

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY:
                return self.answer(413)
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            if not verify(args.secret, headers, body):
                return self.answer(401)
            self.answer(204)  # answer first: a slow provisioner must not time the delivery out
            handle(args, json.loads(body), seen, placed)

        def answer(self, status):
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_):
            pass

    host, _, port = args.listen.rpartition(":")
    server = ThreadingHTTPServer((host, int(port)), Hook)
    print(f"listening on http://{host}:{server.server_port}/", flush=True)
    server.serve_forever()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", default="127.0.0.1:8787", help="host:port (port 0: any)")
    p.add_argument("--secret", required=True, help="the endpoint's whsec_ signing secret")
    p.add_argument("--target", choices=sorted(PLANS), default="kubernetes")
    p.add_argument("--api", help="neocloud's base URL, to report allocations ready")
    p.add_argument("--operator-key", help="an operator API key, with --api")
    serve(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
