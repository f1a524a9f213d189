from patchgen import PatchConfig
config = PatchConfig(source_module="m")
x = ((((((((((1))))))))))
y = [[[[[[[[]]]]]]]]
z = 1+1+1+1+1+1+1+1+1+1+1+1
w = not not not not not True
v = a.b.c.d.e.f
