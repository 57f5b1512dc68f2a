from regnn.models.regnn import REGNN, TypeProjection
from regnn.models.backbones import BACKBONES

__all__ = ["REGNN", "TypeProjection", "BACKBONES"]
