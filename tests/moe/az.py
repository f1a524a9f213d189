"""azure-storage-blob (Microsoft's client) as the independent Azure client of
tests/moe_remote.rs, against the Azurite emulator at AZURITE_BLOB_STORAGE_URL
(its well-known development account).

usage:
  az.py mb CONTAINER
  az.py get CONTAINER PREFIX DIR   download every blob under PREFIX/ into DIR
  az.py ls CONTAINER PREFIX        one blob name per line
"""

import os
import sys

from azure.storage.blob import BlobServiceClient

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
url = os.environ["AZURITE_BLOB_STORAGE_URL"].rstrip("/") + "/" + ACCOUNT
service = BlobServiceClient(account_url=url, credential={"account_name": ACCOUNT, "account_key": KEY})
cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "mb":
    service.create_container(args[0])
elif cmd == "get":
    container, prefix, d = args
    os.makedirs(d, exist_ok=True)
    c = service.get_container_client(container)
    for b in c.list_blobs(name_starts_with=prefix + "/"):
        with open(os.path.join(d, b.name[len(prefix) + 1 :]), "wb") as f:
            f.write(c.download_blob(b.name).readall())
elif cmd == "ls":
    container, prefix = args
    for b in service.get_container_client(container).list_blobs(name_starts_with=prefix + "/"):
        print(b.name)
else:
    sys.exit(f"unknown command {cmd}")
