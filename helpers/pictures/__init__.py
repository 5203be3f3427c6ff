"""Pictures of TensorBoard's pages, taken from lesson 08's runs by ``helpers.authoring.pictures``
(shown by ``helpers.board.picture``)."""
