"""Sample code submission ``broken_model``: its predict raises, so the submission must fail with this
traceback shown to the participant and nothing scored."""

import numpy as np


class Model:
    def fit(self, train_maps, train_labels):
        self.mean_map = np.mean(train_maps, axis=0)

    def predict(self, maps):
        # A typical mistake: a reshape that assumes another map size.
        flat = maps.reshape(len(maps), 1424 * 176)
        return {"means": flat[:, :2], "errorbars": flat[:, :2], "p_ind": flat[:, 0]}
