from patchgen import PatchConfig
import copy
config = PatchConfig(source_module="m", target_file="o.py")
a = [1, "x", (2, 3), {"k": [4]}]
a.append(a[1:])
b = {"k": a} | {"j": 1}
s = set(); s.add("q"); s |= {"r"}
t = "ab" * 3 + str(len(a))
if t == "x":
    pass
elif a and not b:
    pass
else:
    config.exclude_from_output(*sorted(["b", "a"]))
c = copy.copy(a)
d = [x for x in a if x]
config.drop_imported_names.update({"n"})
config.description = f"{t}!"
for i in range(3):
    pass
try:
    import foo
except ImportError:
    foo = None
