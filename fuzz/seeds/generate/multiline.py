class A:
    def forward(self,
            x):
        """doc
        """
        return (x +
                1)
    def forward(self): pass


def f(): return [
1]
