def handle(data, context):
    if data:
    	return [entry["data"] for entry in data]
