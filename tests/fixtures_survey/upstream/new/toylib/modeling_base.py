from torch import nn


class ToyBaseLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
