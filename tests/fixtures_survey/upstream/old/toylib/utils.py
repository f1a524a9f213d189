def auto_docstring(obj=None, **kwargs):
    return obj


def can_return_tuple(fn):
    return fn


def capture_outputs(fn):
    return fn


def merge_with_config_defaults(fn):
    return fn


def use_kernel_forward_from_hub(name):
    return lambda obj: obj


def use_kernel_func_from_hub(name):
    return lambda obj: obj
