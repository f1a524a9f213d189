from torch import nn


class ToyBaseLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dropout = config.dropout

    def reset(self, hard=False):
        pass
