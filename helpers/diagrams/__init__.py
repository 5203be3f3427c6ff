"""Diagrams the lessons draw from the objects at hand: a broadcast, an autograd graph, a
DataLoader's pipeline. Each function returns a matplotlib figure (follow it with ``plt.show()``).
"""
