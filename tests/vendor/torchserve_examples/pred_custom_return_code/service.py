from ts.utils.util import PredictionException

def handle(data, ctx):
    # Data is not none in prediction request
    # Python raises PredictionException with custom error code 
    if data is not None:
        raise PredictionException("Some Prediction Error", 599) 
    return ["OK"]
