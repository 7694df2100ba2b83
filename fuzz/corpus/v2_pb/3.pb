
m"
content_typepd*
bBOOL: