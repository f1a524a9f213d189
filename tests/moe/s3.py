"""boto3 (installed with moto[server]) as the independent S3 client of
tests/moe_remote.rs, against the endpoint in AWS_ENDPOINT.

usage:
  s3.py mb BUCKET
  s3.py put DIR BUCKET PREFIX      upload every file of DIR under PREFIX/
  s3.py get BUCKET PREFIX DIR      download every object under PREFIX/ into DIR
  s3.py rm BUCKET KEY
  s3.py ls BUCKET PREFIX           one key per line
  s3.py uploads BUCKET PREFIX      the key of every multipart upload in progress, one per line
  s3.py everything BUCKET          every object key and every multipart upload's key in the bucket
"""

import os
import sys

import boto3

s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT"], region_name="us-east-1")
cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "mb":
    s3.create_bucket(Bucket=args[0])
elif cmd == "put":
    d, bucket, prefix = args
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            s3.upload_file(p, bucket, f"{prefix}/{name}")
elif cmd == "get":
    bucket, prefix, d = args
    os.makedirs(d, exist_ok=True)
    for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "/").get("Contents", []):
        s3.download_file(bucket, o["Key"], os.path.join(d, o["Key"][len(prefix) + 1:]))
elif cmd == "rm":
    s3.delete_object(Bucket=args[0], Key=args[1])
elif cmd == "ls":
    for o in s3.list_objects_v2(Bucket=args[0], Prefix=args[1] + "/").get("Contents", []):
        print(o["Key"])
elif cmd == "everything":
    for o in s3.list_objects_v2(Bucket=args[0]).get("Contents", []):
        print(o["Key"])
    for u in s3.list_multipart_uploads(Bucket=args[0]).get("Uploads", []):
        print("upload:", u["Key"])
elif cmd == "uploads":
    for u in s3.list_multipart_uploads(Bucket=args[0], Prefix=args[1] + "/").get("Uploads", []):
        print(u["Key"])
else:
    sys.exit(f"unknown command {cmd}")
